"""crank.cli"""
