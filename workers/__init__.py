"""RQ jobs: host matches, schedule tournaments, record results, fit ratings."""
