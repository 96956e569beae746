package tikv

// DirectGet is get.go's direct KvGet, for testdata/get.
var DirectGet = (*Storage).directGet
