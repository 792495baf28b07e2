"""The tool-using repair environment: protocol, tools, episodes, batched episodes, scripted agents."""
