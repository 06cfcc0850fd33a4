"""The `moon` protobuf packages (generated code only; the game engine is the top-level `moon`)."""
