package activities_test

import (
	"reflect"
	"testing"

	"github.com/jobhooks/jobhooks/activities"
)

// TestSet_ActivityNamesAreUnique: Temporal names an activity after its
// method, so two types of the set with a method of one name could not both
// be registered with a worker.
func TestSet_ActivityNamesAreUnique(t *testing.T) {
	set := reflect.TypeFor[activities.Set]()
	owner := map[string]string{}
	for i := range set.NumField() {
		typ := set.Field(i).Type
		if typ.NumMethod() == 0 {
			t.Errorf("%s has no activity", typ)
		}
		for j := range typ.NumMethod() {
			name := typ.Method(j).Name
			if other, ok := owner[name]; ok {
				t.Errorf("activity %s is a method of both %s and %s", name, other, typ)
			}
			owner[name] = typ.String()
		}
	}
	if len(owner) != 11 {
		t.Errorf("%d activities, want the 11 the workflows call: %v", len(owner), owner)
	}
}
