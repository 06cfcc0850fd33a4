"""What a process tells its operators: Prometheus metrics and structured logs."""
