"""Bot SDK, built-in bots and the `moonshot` command line."""
