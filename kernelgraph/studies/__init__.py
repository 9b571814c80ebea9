"""Studies that wire the agent to an in-process service: they live at the composition root."""
