"""crank.lsp: the editor server on pygls (``python -m crank.lsp``, ``crank serve``).

It translates between LSP and ``crank.workspace``; it decides nothing about agents.
``serve.main(argv)`` is the entry point; docs/protocol.md is the contract.
"""
