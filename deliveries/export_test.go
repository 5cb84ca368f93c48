package deliveries

// OrderRuns is orderRuns, for the tests of package deliveries_test.
var OrderRuns = orderRuns
