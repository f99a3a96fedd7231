package db

import (
	"database/sql"
	"fmt"
	"reflect"
	"strings"
	"sync"
)

// scanPlans caches, per row type and column list, which struct field each
// result column scans into.
type scanPlans struct{ m sync.Map } // planKey -> []int

type planKey struct {
	typ  reflect.Type
	cols string
}

// scanAll reads every row of rows into a new R, scanning each column
// straight into the R field whose gorm column tag names it (columns without
// a field are read and dropped). It does what gorm's Find does for these
// plain row structs at a fraction of the cost: the field pointers are taken
// once per row, without gorm's per-field reflective setters.
func scanAll[R any](plans *scanPlans, rows *sql.Rows) ([]R, error) {
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	typ := reflect.TypeFor[R]()
	plan, err := plans.get(typ, cols)
	if err != nil {
		return nil, err
	}
	var out []R
	dest := make([]any, len(cols))
	var discard any
	for rows.Next() {
		var r R
		v := reflect.ValueOf(&r).Elem()
		for i, fi := range plan {
			if fi < 0 {
				dest[i] = &discard
			} else {
				dest[i] = v.Field(fi).Addr().Interface()
			}
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

func (p *scanPlans) get(typ reflect.Type, cols []string) ([]int, error) {
	key := planKey{typ: typ, cols: strings.Join(cols, ",")}
	if plan, ok := p.m.Load(key); ok {
		return plan.([]int), nil
	}
	byColumn := map[string]int{}
	for i := 0; i < typ.NumField(); i++ {
		for _, part := range strings.Split(typ.Field(i).Tag.Get("gorm"), ";") {
			if name, ok := strings.CutPrefix(part, "column:"); ok {
				byColumn[name] = i
			}
		}
	}
	if len(byColumn) == 0 {
		return nil, fmt.Errorf("db: %s has no gorm column tags", typ)
	}
	plan := make([]int, len(cols))
	for i, c := range cols {
		fi, ok := byColumn[strings.ToLower(c)]
		if !ok {
			fi = -1
		}
		plan[i] = fi
	}
	p.m.Store(key, plan)
	return plan, nil
}
