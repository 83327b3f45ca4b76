"""Edge–cloud routing: the router behind `edgepick serve`, its policy, the context builder for
small windows, and `edgepick route eval` (seed 000 §6.3-6.4, seed 001 §6.3, seed 003 §7.3, §8.3,
seed 004 §4.2, §6.5)."""
