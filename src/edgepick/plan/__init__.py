"""Plans: one YAML file naming the device, candidates, eval set, scenario and sweeps."""
