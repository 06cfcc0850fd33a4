"""Home of the wire contract: the .proto sources and their generated Python, side by side."""
