"""The compatibility matrix as a library: catalog, scenarios, records, runner."""
