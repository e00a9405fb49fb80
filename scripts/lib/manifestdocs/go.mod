module tilehouse/tools/manifestdocs

go 1.25.0
