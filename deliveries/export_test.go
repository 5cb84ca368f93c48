package deliveries

// OrderRuns is orderRuns, for the tests of package deliveries_test.
var OrderRuns = orderRuns

// EnvelopeOf reads back what a spec body was built from.
var EnvelopeOf = envelopeOf
