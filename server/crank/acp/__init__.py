"""crank.acp: the Agent Client Protocol frontend (``crank acp``), beside crank.lsp.

It translates ACP's methods into the workspace layer's API and Crank's events into
``session/update`` notifications; see docs/acp.md and ``agent.CrankAgent``.
"""
