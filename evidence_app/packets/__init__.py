"""The evidence packet a judge reads: the tool results of an attempt, labelled, and the packet
as text."""
