"""crank.lsp"""
