"""Hosting: the part of the stack that runs the bots authors submit as code."""
