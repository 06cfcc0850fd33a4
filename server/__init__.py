"""The gRPC referee service (gateway between bot streams, Redis and organisers)."""
