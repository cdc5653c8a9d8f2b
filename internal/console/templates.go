package console

import (
	"html/template"
	"strings"
)

// parsePages parses the layout once per page, so each page defines its
// own "content".
func parsePages() map[string]*template.Template {
	pageNames := []string{"signin", "message", "connect", "grants", "revokeall", "password", "activity", "health", "charts", "projects"}
	funcs := template.FuncMap{"join": strings.Join, "size": sizeOf}
	layout := template.Must(template.New("layout").Funcs(funcs).ParseFS(templates, "templates/layout.html"))
	out := make(map[string]*template.Template, len(pageNames))
	for _, name := range pageNames {
		t := template.Must(template.Must(layout.Clone()).ParseFS(templates, "templates/"+name+".html"))
		out[name] = t
	}
	return out
}
