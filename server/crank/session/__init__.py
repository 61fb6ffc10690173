"""crank.session"""
