package db

import (
	"database/sql"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"gorm.io/gorm/schema"
)

// scanPlans caches, per row type and column list, how each result column
// lands in the row struct. Columns are matched to fields by GORM's own
// schema of the row type (its column tags read by GORM, once).
type scanPlans struct {
	m       sync.Map // planKey -> []colPlan
	schemas sync.Map // GORM's schema cache
}

type planKey struct {
	typ  reflect.Type
	cols string
}

// colKind is how a column is read and assigned.
type colKind int

const (
	colDiscard   colKind = iota // no field: read and dropped
	colString                   // string
	colStringPtr                // *string
	colInt                      // int64
	colIntPtr                   // *int64
	colBoolPtr                  // *bool
	colTimePtr                  // *time.Time
	colScanner                  // a field implementing sql.Scanner (JSON columns)
)

type colPlan struct {
	field int
	kind  colKind
}

var scannerType = reflect.TypeFor[sql.Scanner]()

// scanEach reads every row of rows into one R, zeroed before every row,
// each column into the R field whose gorm column tag names it (columns
// without a field are read and dropped), and hands it to each. What each
// keeps of r is its own (strings, pointers and maps are new on every row),
// r is not: callers that turn rows into objects need no slice of rows.
// Strings are read as sql.RawBytes and copied once, other values as the
// driver returns them and converted here: database/sql's reflective
// conversion into pointer fields was a quarter of a Cluster.list. Fields
// are assigned through reflect (no unsafe), and only fields of exactly the
// types kindOf names are planned, so a named or unsupported type fails when
// the plan is made (checked for every model by TestEveryModelHasAPlan),
// never silently reinterpreted.
func scanEach[R any](plans *scanPlans, rows *sql.Rows, each func(*R) error) error {
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	plan, err := plans.get(reflect.TypeFor[R](), cols)
	if err != nil {
		return err
	}
	raws := make([]sql.RawBytes, len(cols))
	vals := make([]any, len(cols))
	dest := make([]any, len(cols))
	r := new(R)
	v := reflect.ValueOf(r).Elem()
	var values rowValues
	for _, p := range plan {
		switch p.kind {
		case colStringPtr:
			values.ptrs++
		case colIntPtr:
			values.nInts++
		case colBoolPtr:
			values.nBools++
		case colTimePtr:
			values.nTimes++
		}
	}
	for i, p := range plan {
		switch p.kind {
		case colString, colStringPtr:
			dest[i] = &raws[i]
		case colScanner:
			dest[i] = v.Field(p.field).Addr().Interface()
		default:
			dest[i] = &vals[i]
		}
	}
	for rows.Next() {
		var zero R
		*r = zero
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		values.reset(plan, raws)
		for i, p := range plan {
			if err := assign(v.Field(p.field), p.kind, raws[i], vals[i], &values); err != nil {
				return fmt.Errorf("db: column %s: %w", cols[i], err)
			}
		}
		if err := each(r); err != nil {
			return err
		}
	}
	return rows.Err()
}

// rowValues holds the string columns of one row in one allocation and the
// targets of its *string fields in another, where a copy and a pointer per
// column were two allocations each (most of a Cluster.list's); the targets
// of its *int64, *bool and *time.Time fields likewise share one allocation
// per type. The values of a row share its memory, which lives as long as
// any of them: rows are a few KB.
type rowValues struct {
	ptrs  int    // *string columns in the plan
	buf   []byte // reused from row to row
	all   string
	off   int
	cells []string
	used  int

	nInts, nBools, nTimes int // *int64, *bool, *time.Time columns in the plan
	ints                  []int64
	bools                 []bool
	times                 []time.Time
}

// reset copies the string columns of the row just scanned, in plan order.
func (s *rowValues) reset(plan []colPlan, raws []sql.RawBytes) {
	s.buf = s.buf[:0]
	for i, p := range plan {
		if p.kind == colString || p.kind == colStringPtr {
			s.buf = append(s.buf, raws[i]...)
		}
	}
	s.all, s.off, s.used, s.cells = string(s.buf), 0, 0, nil
	if s.ptrs > 0 {
		s.cells = make([]string, s.ptrs)
	}
	s.ints, s.bools, s.times = nil, nil, nil
	if s.nInts > 0 {
		s.ints = make([]int64, 0, s.nInts)
	}
	if s.nBools > 0 {
		s.bools = make([]bool, 0, s.nBools)
	}
	if s.nTimes > 0 {
		s.times = make([]time.Time, 0, s.nTimes)
	}
}

// cell appends v to the row's cells of its type (allocated by reset with
// room for every column of that type) and returns its address.
func cell[T any](cells *[]T, v T) *T {
	*cells = append(*cells, v)
	return &(*cells)[len(*cells)-1]
}

// next is the next string column, raw's copy; columns are taken in plan
// order.
func (s *rowValues) next(raw sql.RawBytes) string {
	v := s.all[s.off : s.off+len(raw)]
	s.off += len(raw)
	return v
}

// ptr is next, for a *string field.
func (s *rowValues) ptr(raw sql.RawBytes) *string {
	p := &s.cells[s.used]
	s.used++
	*p = s.next(raw)
	return p
}

// assign stores one scanned column into field f; string columns come from
// values, which must see them in plan order.
func assign(f reflect.Value, kind colKind, raw sql.RawBytes, val any, values *rowValues) error {
	switch kind {
	case colString:
		f.SetString(values.next(raw))
	case colStringPtr:
		if raw != nil {
			f.Set(reflect.ValueOf(values.ptr(raw)))
		}
	case colInt, colIntPtr:
		if val == nil {
			return nil
		}
		n, err := asInt(val)
		if err != nil {
			return err
		}
		if kind == colInt {
			f.SetInt(n)
		} else {
			f.Set(reflect.ValueOf(cell(&values.ints, n)))
		}
	case colBoolPtr:
		if val == nil {
			return nil
		}
		n, err := asInt(val)
		if err != nil {
			return err
		}
		f.Set(reflect.ValueOf(cell(&values.bools, n != 0)))
	case colTimePtr:
		if val == nil {
			return nil
		}
		t, err := asTime(val)
		if err != nil {
			return err
		}
		f.Set(reflect.ValueOf(cell(&values.times, t)))
	}
	return nil
}

func asInt(v any) (int64, error) {
	switch x := v.(type) {
	case int64:
		return x, nil
	case bool:
		if x {
			return 1, nil
		}
		return 0, nil
	case []byte:
		return strconv.ParseInt(string(x), 10, 64)
	case string:
		return strconv.ParseInt(x, 10, 64)
	}
	return 0, fmt.Errorf("unexpected %T for an integer", v)
}

// timeLayouts are the forms a DATETIME may arrive in as text.
var timeLayouts = [...]string{"2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999Z07:00", "2006-01-02"}

func asTime(v any) (time.Time, error) {
	var s string
	switch x := v.(type) {
	case time.Time:
		return x, nil
	case []byte:
		s = string(x)
	case string:
		s = x
	default:
		return time.Time{}, fmt.Errorf("unexpected %T for a time", v)
	}
	for _, l := range timeLayouts {
		if t, err := time.ParseInLocation(l, s, time.UTC); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("cannot read %q as a time", s)
}

func (p *scanPlans) get(typ reflect.Type, cols []string) ([]colPlan, error) {
	key := planKey{typ: typ, cols: strings.Join(cols, ",")}
	if plan, ok := p.m.Load(key); ok {
		return plan.([]colPlan), nil
	}
	if typ.Kind() != reflect.Struct {
		return nil, fmt.Errorf("db: %s is not a struct", typ)
	}
	sch, err := schema.Parse(reflect.New(typ).Interface(), &p.schemas, schema.NamingStrategy{})
	if err != nil {
		return nil, fmt.Errorf("db: %s: %w", typ, err)
	}
	byColumn := map[string]colPlan{}
	for _, f := range sch.Fields {
		if f.DBName == "" || !f.Readable {
			continue
		}
		if len(f.StructField.Index) != 1 {
			return nil, fmt.Errorf("db: %s.%s: embedded fields are not scanned", typ, f.Name)
		}
		kind, err := kindOf(f.StructField.Type)
		if err != nil {
			return nil, fmt.Errorf("db: %s.%s: %w", typ, f.Name, err)
		}
		byColumn[f.DBName] = colPlan{field: f.StructField.Index[0], kind: kind}
	}
	plan := make([]colPlan, len(cols))
	for i, c := range cols {
		cp, ok := byColumn[strings.ToLower(c)]
		if !ok {
			cp = colPlan{kind: colDiscard}
		}
		plan[i] = cp
	}
	p.m.Store(key, plan)
	return plan, nil
}

// kindOf is how a field of type t is read: exactly these types (a named
// type, even of one of their kinds, is refused), or a type whose pointer
// is an sql.Scanner.
func kindOf(t reflect.Type) (colKind, error) {
	if reflect.PointerTo(t).Implements(scannerType) {
		return colScanner, nil
	}
	switch t {
	case reflect.TypeFor[string]():
		return colString, nil
	case reflect.TypeFor[int64]():
		return colInt, nil
	case reflect.TypeFor[*string]():
		return colStringPtr, nil
	case reflect.TypeFor[*int64]():
		return colIntPtr, nil
	case reflect.TypeFor[*bool]():
		return colBoolPtr, nil
	case reflect.TypeFor[*time.Time]():
		return colTimePtr, nil
	}
	return 0, fmt.Errorf("no column reader for %s", t)
}
