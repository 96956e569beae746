package errno

// Codes of FOREIGN KEY constraints: their definitions (MySQL 8's codes,
// which MariaDB folds into 1005 "errno: 150") and their checks in DML.
const (
	ErCannotAddForeign        = 1215
	ErWrongFKDef              = 1239
	ErRowIsReferenced2        = 1451
	ErNoReferencedRow2        = 1452
	ErDropIndexFK             = 1553
	ErTruncateIllegalFK       = 1701
	ErFKNoIndexParent         = 1822
	ErFKCannotOpenParent      = 1824
	ErFKDupName               = 1826
	ErFKColumnCannotDrop      = 1828
	ErFKColumnCannotDropChild = 1829
	ErFKColumnNotNull         = 1830
	ErFKDepthExceeded         = 3008
	ErFKCannotDropParent      = 3730
	ErFKNoColumnParent        = 3734
	ErFKIncompatibleColumns   = 3780
)

func init() {
	for code, st := range map[uint16]string{
		ErCannotAddForeign:        "HY000",
		ErWrongFKDef:              "42000",
		ErRowIsReferenced2:        "23000",
		ErNoReferencedRow2:        "23000",
		ErDropIndexFK:             "HY000",
		ErTruncateIllegalFK:       "42000",
		ErFKNoIndexParent:         "HY000",
		ErFKCannotOpenParent:      "HY000",
		ErFKDupName:               "HY000",
		ErFKColumnCannotDrop:      "HY000",
		ErFKColumnCannotDropChild: "HY000",
		ErFKColumnNotNull:         "HY000",
		ErFKDepthExceeded:         "HY000",
		ErFKCannotDropParent:      "HY000",
		ErFKNoColumnParent:        "HY000",
		ErFKIncompatibleColumns:   "HY000",
	} {
		states[code] = st
	}
}
