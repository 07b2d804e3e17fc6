"""Public entry points of the kernel."""
