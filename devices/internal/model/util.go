package model

import "sort"

func SortStrings(s []string) { sort.Strings(s) }
