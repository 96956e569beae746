package errno

// Errors of values, types, collations and functions.
const (
	ErUnknownCollation         = 1273
	ErCollationCharsetMismatch = 1253
	WarnDataTruncated          = 1265
	ErDataOutOfRange           = 1690
	ErWrongValueForType        = 1411
	ErDuplicatedValueInType    = 1291
	ErInvalidJSONText          = 3140
	ErInvalidJSONPath          = 3143
	ErInvalidJSONTextInParam   = 3141
	ErInvalidJSONPathWildcard  = 3149
	ErInvalidTypeForJSON       = 3146
	ErTooBigFieldlength        = 1074
	ErTooBigSet                = 1097
	ErRegexp                   = 1139
	ErIncorrectParamsToFunc    = 1583
	ErMBiggerThanD             = 1427
)

func init() {
	for code, st := range map[uint16]string{
		ErUnknownCollation: "HY000", ErCollationCharsetMismatch: "42000", WarnDataTruncated: "01000",
		ErDataOutOfRange: "22003", ErWrongValueForType: "HY000", ErDuplicatedValueInType: "HY000",
		ErInvalidJSONText: "22032", ErInvalidJSONPath: "42000", ErInvalidJSONTextInParam: "22032",
		ErInvalidJSONPathWildcard: "42000", ErInvalidTypeForJSON: "22032", ErTooBigFieldlength: "42000",
		ErTooBigSet: "HY000", ErMBiggerThanD: "42000", ErRegexp: "42000", ErIncorrectParamsToFunc: "42000",
	} {
		states[code] = st
	}
}
