// Command upstream is the demo API of the README's quick start: it creates
// invoices and notifications and counts every effect, so you can watch
// toolguard keep retries from repeating them.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http"
	"strconv"
	"sync"
)

type invoice struct {
	ID        string `json:"id"`
	Status    string `json:"status"`
	Customer  string `json:"customer"`
	Amount    int64  `json:"amount"`
	Currency  string `json:"currency"`
	Reference string `json:"reference"`
}

type api struct {
	mu            sync.Mutex
	invoices      []invoice
	notifications int
}

func main() {
	listen := flag.String("listen", "127.0.0.1:9099", "address to listen on")
	flag.Parse()
	a := &api{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/invoices", a.createInvoice)
	mux.HandleFunc("GET /v1/invoices", a.listInvoices)
	mux.HandleFunc("GET /v1/invoices/{id}", a.getInvoice)
	mux.HandleFunc("POST /v1/notifications", a.notify)
	mux.HandleFunc("GET /stats", a.stats)
	log.Printf("demo API on http://%s (effects: GET /stats)", *listen)
	log.Fatal(http.ListenAndServe(*listen, mux))
}

func (a *api) createInvoice(w http.ResponseWriter, r *http.Request) {
	var in invoice
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		http.Error(w, `{"error":"invalid json"}`, http.StatusBadRequest)
		return
	}
	a.mu.Lock()
	in.ID = "inv_" + strconv.Itoa(len(a.invoices)+1)
	in.Status = "open"
	a.invoices = append(a.invoices, in)
	a.mu.Unlock()
	log.Printf("EFFECT: created %s for %s (%d %s)", in.ID, in.Customer, in.Amount, in.Currency)
	writeJSON(w, http.StatusCreated, in)
}

func (a *api) listInvoices(w http.ResponseWriter, r *http.Request) {
	ref := r.URL.Query().Get("reference")
	a.mu.Lock()
	data := []invoice{}
	for _, in := range a.invoices {
		if ref == "" || in.Reference == ref {
			data = append(data, in)
		}
	}
	a.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"data": data})
}

func (a *api) getInvoice(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, in := range a.invoices {
		if in.ID == r.PathValue("id") {
			writeJSON(w, http.StatusOK, in)
			return
		}
	}
	writeJSON(w, http.StatusNotFound, map[string]string{"error": "no such invoice"})
}

func (a *api) notify(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	a.notifications++
	id := fmt.Sprintf("ntf_%d", a.notifications)
	a.mu.Unlock()
	log.Printf("EFFECT: sent notification %s", id)
	writeJSON(w, http.StatusCreated, map[string]string{"id": id})
}

func (a *api) stats(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]int{"invoices": len(a.invoices), "notifications": a.notifications})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
