"""crank.vendors"""
