package errno

// Codes of online schema changes (ALTER TABLE, RENAME TABLE).
const (
	ErCantRemoveAllFields = 1090
	ErInvalidUseOfNull    = 1138
	ErWarnDataTruncated   = 1265
)

func init() {
	for code, st := range map[uint16]string{
		ErCantRemoveAllFields: "42000",
		ErInvalidUseOfNull:    "22004",
		ErWarnDataTruncated:   "01000",
	} {
		states[code] = st
	}
}
