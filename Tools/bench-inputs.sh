# The inputs Tools/bench and Tools/compare-builds share: the destination schema, the plans, the
# source store and sqlite3's one-shot copy (case (a)). Sourced, not run.

# write_bench_inputs DIR: writes DIR/schema.sql, DIR/plan.json (conversation and message, keys
# allocated, the message's conversation resolved through the ID map) and DIR/plan-preserve.json
# (the same with the keys preserved).
write_bench_inputs() {
    cat > "$1/schema.sql" <<'SQL'
CREATE TABLE conversation (id INTEGER PRIMARY KEY, title TEXT NOT NULL, created_at INTEGER NOT NULL);
CREATE TABLE message (id INTEGER PRIMARY KEY, conversation_id INTEGER NOT NULL, text TEXT NOT NULL,
                      sent_at INTEGER NOT NULL, is_read INTEGER NOT NULL DEFAULT 0);
SQL
    cat > "$1/plan.json" <<'JSON'
{ "entities": [
  { "name": "Conversation", "source": { "table": "conversation", "key": "id" },
    "destination": { "table": "conversation", "key": "id" },
    "columns": { "title": "title", "created_at": "created" } },
  { "name": "Message", "source": { "table": "message", "key": "id" },
    "destination": { "table": "message", "key": "id" },
    "columns": { "text": "body", "sent_at": "created_at" },
    "relationships": { "conversation_id": { "from": "conversation_id", "to": "Conversation" } } } ] }
JSON
    python3 -c 'import json, sys; p = json.load(open(sys.argv[1])); [e.update(keys="preserve") for e in p["entities"]]; json.dump(p, open(sys.argv[2], "w"))' \
        "$1/plan.json" "$1/plan-preserve.json"
}

# bench_store CHUNKMIGRATE DIR ROWS: prints the path of the demo store of ROWS messages in
# DIR/store-ROWS, generating it the first time.
bench_store() {
    local store="$2/store-$3"
    if [ ! -f "$store/source.sqlite" ]; then
        echo "generating $3 messages" >&2
        "$1" generate --messages "$3" "$store" >/dev/null
    fi
    echo "$store/source.sqlite"
}

# one_shot_sql SOURCE: case (a), sqlite3's one-shot INSERT ... SELECT through ATTACH in one
# transaction, the key and the foreign key copied unchanged.
one_shot_sql() {
    echo "PRAGMA synchronous=NORMAL; ATTACH '$1' AS s; BEGIN;
        INSERT INTO conversation (id, title, created_at) SELECT id, title, created FROM s.conversation;
        INSERT INTO message (id, conversation_id, text, sent_at) SELECT id, conversation_id, body, created_at FROM s.message;
        COMMIT;"
}
