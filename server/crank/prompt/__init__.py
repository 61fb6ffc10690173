"""crank.prompt"""
