# Conformance tests of the suite not replayed here yet, each as
# {name => ..., features => [...], manifests => [...]} with the features
# its Go source declares: the report counts them as skipped in the
# profile and level those features give (a test of a feature the
# GatewayClass does not claim is one the suite would skip too).
# Read by t/400-conformance.t; each moves to the replay of its kind once
# replayed. None is left: GatewayInfrastructure, the last, is replayed by
# t/470 against the API server simulation (it looks for what is made for
# a Gateway).
return [];
