"""crank.workspace"""
