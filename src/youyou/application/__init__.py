"""Use cases of the kernel: sessions, turns, tools, context, memory and plugins."""
