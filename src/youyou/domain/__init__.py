"""Pure data and rules of the kernel: no I/O happens in this package."""
