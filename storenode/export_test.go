package storenode

// RunCallers is runCallers for the benchmarks of package storenode_test.
var RunCallers = runCallers
