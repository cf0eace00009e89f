"""What the caller asked for: the link's command line (args), its target, the Invocation
handed to every stage, and the caller's settings (config). Imports only the base modules."""
