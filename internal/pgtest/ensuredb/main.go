// Command ensuredb makes sure the test database named by the DSN argument
// exists, creating it through the server's "postgres" database when
// missing. CI runs it before the tests; it fails (exit 1) with one line
// when the server cannot be reached.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: ensuredb DSN")
		os.Exit(2)
	}
	if err := ensure(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "ensuredb:", err)
		os.Exit(1)
	}
}

func ensure(dsn string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return fmt.Errorf("parse DSN: %w", err)
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "3D000" { // invalid_catalog_name: no such database
		if err := create(ctx, cfg); err != nil {
			return err
		}
		conn, err = pgx.ConnectConfig(ctx, cfg)
	}
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(ctx)
	var version string
	if err := conn.QueryRow(ctx, "SHOW server_version").Scan(&version); err != nil {
		return fmt.Errorf("query server version: %w", err)
	}
	fmt.Printf("PostgreSQL %s, database %s ready\n", version, cfg.Database)
	return nil
}

// create creates cfg's database through the server's postgres database.
func create(ctx context.Context, cfg *pgx.ConnConfig) error {
	admin := cfg.Copy()
	admin.Database = "postgres"
	c, err := pgx.ConnectConfig(ctx, admin)
	if err != nil {
		return fmt.Errorf("connect to database postgres: %w", err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{cfg.Database}.Sanitize()); err != nil {
		return fmt.Errorf("create database %s: %w", cfg.Database, err)
	}
	fmt.Printf("created database %s\n", cfg.Database)
	return nil
}
