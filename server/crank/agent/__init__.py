"""The brain: messages, the model interface, tools, the loop, the Harness, the view.

Nothing here knows about disks, projects, editors or HTTP. A Harness built with a
system prompt string, a list of tools and any object that satisfies ``Model`` works on
its own; that is the point of the layer.
"""
