package catalog

// legacyCollation is the collation of the text columns of tables created
// before Basalt had collations: those compared bytes, and their index
// keys hold the bytes themselves, which utf8mb4_nopad_bin keeps.
const legacyCollation = "utf8mb4_nopad_bin"

// upgradeCollations gives the text columns of a table created before
// collations, which have none recorded, the collation they behaved by.
// CREATE TABLE records one for every text column since.
func upgradeCollations(t *TableInfo) {
	if t.View != nil {
		return // a view's columns are its query's
	}
	for _, c := range append(t.Columns[:len(t.Columns):len(t.Columns)], t.Hidden...) {
		if c.Type.IsText() && c.Type.Collate == "" {
			c.Type.Collate = legacyCollation
		}
	}
}
