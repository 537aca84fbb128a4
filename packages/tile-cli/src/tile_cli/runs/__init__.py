"""The commands that start runners (bench, test, build, tune, campaign, snap, list, inspect,
device): tile-harness does the work, these modules show it."""
