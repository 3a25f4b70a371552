# The suite's ListenerSet tests (GEP-1713) replayed locally, as t/400
# replays the rest (t/lib/Test/Conformance.pm, t/conformance/listenerset.pl):
# their manifests, the status they wait for, and their requests by Host to
# the listeners a ListenerSet adds to its Gateway.
use lib 't/lib';
use Test::Conformance;
use Test::ConformanceReport;
use Test::More;

replay(do "./t/conformance/listenerset.pl" or die "t/conformance/listenerset.pl: $@$!");
