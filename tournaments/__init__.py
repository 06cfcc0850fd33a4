"""Pure tournament scheduling: specs, a registry of formats, boards, standings."""
