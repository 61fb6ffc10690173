"""crank.tools"""
