package trigger

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestSplit(t *testing.T) {
	cases := []struct {
		sql  string
		want []string // pieces, a trigger statement marked with a leading '!'
	}{
		{"SELECT 1; SELECT 2", []string{"SELECT 1", "SELECT 2"}},
		{"SELECT ';'; SELECT `a;b` -- c;\n; # d;\n", []string{"SELECT ';'", "SELECT `a;b` -- c;"}},
		{"CREATE TRIGGER t1r1 AFTER UPDATE ON t1 FOR EACH ROW BEGIN END;",
			[]string{"!CREATE TRIGGER t1r1 AFTER UPDATE ON t1 FOR EACH ROW BEGIN END"}},
		{"CREATE TRIGGER tr BEFORE INSERT ON t FOR EACH ROW BEGIN SET NEW.a = 1; INSERT INTO l VALUES ('x;y'); END; SELECT 1",
			[]string{"!CREATE TRIGGER tr BEFORE INSERT ON t FOR EACH ROW BEGIN SET NEW.a = 1; INSERT INTO l VALUES ('x;y'); END", "SELECT 1"}},
		{"CREATE TRIGGER tr BEFORE INSERT ON t FOR EACH ROW SET NEW.a = CASE WHEN NEW.a > 1 THEN 1 ELSE 2 END; DROP TRIGGER tr",
			[]string{"!CREATE TRIGGER tr BEFORE INSERT ON t FOR EACH ROW SET NEW.a = CASE WHEN NEW.a > 1 THEN 1 ELSE 2 END", "!DROP TRIGGER tr"}},
		{"CREATE DEFINER=`root`@`%` TRIGGER tr AFTER DELETE ON t FOR EACH ROW BEGIN IF OLD.a > 1 THEN SET @x = IF(OLD.a, 1, 2); END IF; END;;",
			[]string{"!CREATE DEFINER=`root`@`%` TRIGGER tr AFTER DELETE ON t FOR EACH ROW BEGIN IF OLD.a > 1 THEN SET @x = IF(OLD.a, 1, 2); END IF; END"}},
		{"BEGIN; INSERT INTO t VALUES (1); COMMIT", []string{"BEGIN", "INSERT INTO t VALUES (1)", "COMMIT"}},
		{"/*!50003 CREATE*/ /*!50003 TRIGGER tr BEFORE INSERT ON t FOR EACH ROW SET NEW.a=1 */;",
			[]string{"!/*!50003 CREATE*/ /*!50003 TRIGGER tr BEFORE INSERT ON t FOR EACH ROW SET NEW.a=1 */"}},
	}
	for _, c := range cases {
		pieces, has := Split(c.sql)
		var got []string
		anyTrig := false
		for _, p := range pieces {
			s := p.SQL
			if p.Trigger {
				s, anyTrig = "!"+s, true
			}
			got = append(got, s)
		}
		if !reflect.DeepEqual(got, c.want) || has != anyTrig {
			t.Errorf("Split(%q) = %q (trigger %v), want %q", c.sql, got, has, c.want)
		}
	}
}

func TestParse(t *testing.T) {
	cases := []struct {
		sql  string
		want string // fmt %+v of the statement, or "error: near"
	}{
		{"CREATE TRIGGER t1r1 AFTER UPDATE ON t1 FOR EACH ROW BEGIN END",
			"&{Definer: IfNotExists:false Schema: Name:t1r1 Timing:AFTER Event:UPDATE TableSchema: Table:t1 Order: Other: Body:BEGIN END Stmts:[]}"},
		{"create definer = 'u'@'localhost' trigger if not exists d.`my tr` before insert on d.t for each row precedes other set new.a = 1",
			"&{Definer:'u'@'localhost' IfNotExists:true Schema:d Name:my tr Timing:BEFORE Event:INSERT TableSchema:d Table:t Order:PRECEDES Other:other Body:set new.a = 1 Stmts:[set new.a = 1]}"},
		{"CREATE DEFINER=CURRENT_USER() TRIGGER tr BEFORE DELETE ON t FOR EACH ROW BEGIN INSERT INTO l VALUES (OLD.a); SET @n = @n + 1; END",
			"&{Definer:CURRENT_USER() IfNotExists:false Schema: Name:tr Timing:BEFORE Event:DELETE TableSchema: Table:t Order: Other: Body:BEGIN INSERT INTO l VALUES (OLD.a); SET @n = @n + 1; END Stmts:[INSERT INTO l VALUES (OLD.a) SET @n = @n + 1]}"},
		{"/*!50003 CREATE*/ /*!50017 DEFINER=`root`@`localhost`*/ /*!50003 TRIGGER tr BEFORE INSERT ON t FOR EACH ROW SET NEW.a=1 */",
			"&{Definer:`root`@`localhost` IfNotExists:false Schema: Name:tr Timing:BEFORE Event:INSERT TableSchema: Table:t Order: Other: Body:SET NEW.a=1 Stmts:[SET NEW.a=1]}"},
		{"DROP TRIGGER IF EXISTS d.tr", "&{IfExists:true Schema:d Name:tr}"},
		{"drop trigger tr;", "&{IfExists:false Schema: Name:tr}"},
		{"SHOW CREATE TRIGGER `t r`", "&{Schema: Name:t r}"},
		// Errors name the text from the token MySQL stops at.
		{"CREATE TRIGGER t1r1 UPDATE ON t1 BEGIN SELECT 1; END", "error: UPDATE ON t1 BEGIN SELECT 1; END"},
		{"CREATE TRIGGER tr AFTER UPDATE ON t1 BEGIN END", "error: BEGIN END"},
		{"CREATE TRIGGER tr AFTER UPDATE ON t1 FOR EACH ROW", "error: "},
		{"CREATE TRIGGER tr AFTER UPDATE ON t1 FOR EACH ROW BEGIN SET @a = 1 END", "error: END"},
		{"CREATE TRIGGER tr AFTER UPDATE ON t1 FOR EACH ROW BEGIN SET @a = 1;", "error: "},
		{"DROP TRIGGER tr extra", "error: extra"},
		{"CHECKSUM TABLE t", "&{Tables:[{Schema: Name:t}]}"},
		{"checksum tables d.`a b`, t2 EXTENDED;", "&{Tables:[{Schema:d Name:a b} {Schema: Name:t2}]}"},
		{"CHECKSUM TABLE t QUICK", "&{Tables:[{Schema: Name:t}]}"},
		{"CHECKSUM TABLE t, ", "error: "},
		{"CHECKSUM TABLE t FAST", "error: FAST"},
	}
	for _, c := range cases {
		st, err := Parse(c.sql)
		got := ""
		if err != nil {
			se, ok := err.(*SyntaxError)
			if !ok {
				t.Fatalf("Parse(%q): %T %v", c.sql, err, err)
			}
			got = "error: " + se.Near
			if !strings.Contains(err.Error(), "right syntax to use near") {
				t.Errorf("message %q", err)
			}
		} else {
			got = fmt.Sprintf("%+v", st)
		}
		if got != c.want {
			t.Errorf("Parse(%q)\n got %s\nwant %s", c.sql, got, c.want)
		}
	}
}
