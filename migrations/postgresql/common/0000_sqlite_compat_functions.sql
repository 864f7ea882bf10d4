-- SQLite's functions in PostgreSQL (PostgreSQL only; applied before any other migration), so that the SQL in
-- the code and in the docs runs unchanged on both databases. Timestamps are stored as SQLite writes them:
-- TEXT 'YYYY-MM-DD HH:MM:SS' in UTC; these functions take and return the same text forms.
--
--   datetime(t, modifier…)   'YYYY-MM-DD HH:MM:SS'      date(t, modifier…)  'YYYY-MM-DD'
--   julianday(t, modifier…)  days since noon UTC, 4714 BC    unixepoch(t, modifier…)  seconds since 1970
--   strftime(format, t, modifier…)
--     t: 'now' (this statement's time), 'YYYY-MM-DD[ HH:MM[:SS[.SSS]]]' (a 'T' may stand for the space; a
--     'Z' or '+HH:MM' suffix is converted to UTC), or a number with the 'unixepoch' modifier.
--     modifiers: '±N days|hours|minutes|seconds|months|years' (N may have a fraction), 'start of day',
--     'start of month', 'start of year', 'weekday N', 'unixepoch', 'utc'; an unknown one gives NULL, as in SQLite.
--     strftime formats: %d %e %f %H %j %J %m %M %s %S %u %w %W %Y %% (SQLite's set).
--   round(double precision, integer)   half away from zero, like SQLite (PostgreSQL has it for numeric only)
--   sum(boolean)                        SUM(a = b) counts the true rows (NULL when every row is NULL)
--   ifnull(a, b), instr(text, text), group_concat(text[, separator])
-- Known differences that no function can hide: LIKE is case-sensitive in PostgreSQL; a HAVING clause cannot
-- name a SELECT alias there (repeat the expression); ROUND(x) of a double rounds half to even; time() is a
-- type name in PostgreSQL (use strftime('%H:%M:%S', t)).

CREATE FUNCTION kodiai_sqlite_moment(value text, modifiers text[]) RETURNS timestamp
LANGUAGE plpgsql STABLE STRICT AS $$
DECLARE
  moment timestamp;
  m text;
  parts text[];
  amount double precision;
  unit text;
  target int;
  is_epoch boolean := 'unixepoch' = ANY (SELECT lower(trim(x)) FROM unnest(modifiers) AS x);
BEGIN
  IF is_epoch THEN
    IF value !~ '^\s*[-+]?[0-9]+(\.[0-9]*)?\s*$' THEN
      RETURN NULL;
    END IF;
    moment := to_timestamp(value::double precision) AT TIME ZONE 'UTC';
  ELSIF lower(trim(value)) = 'now' THEN
    moment := statement_timestamp() AT TIME ZONE 'UTC';
  ELSIF value ~ '^\s*[0-9]{4}-[0-9]{2}-[0-9]{2}([ T][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?)?\s*(Z|[-+][0-9]{2}:?[0-9]{2})?\s*$' THEN
    BEGIN
      IF value ~ '(Z|[-+][0-9]{2}:?[0-9]{2})\s*$' THEN
        moment := (replace(trim(value), 'T', ' ')::timestamptz) AT TIME ZONE 'UTC';
      ELSE
        moment := replace(trim(value), 'T', ' ')::timestamp;
      END IF;
    EXCEPTION WHEN others THEN
      RETURN NULL;  -- e.g. '2024-02-31': SQLite gives NULL for a date it cannot read
    END;
  ELSE
    RETURN NULL;
  END IF;
  FOREACH m IN ARRAY modifiers LOOP
    m := lower(trim(m));
    IF m IN ('unixepoch', 'utc') THEN
      CONTINUE;
    ELSIF m = 'start of day' THEN
      moment := date_trunc('day', moment);
    ELSIF m = 'start of month' THEN
      moment := date_trunc('month', moment);
    ELSIF m = 'start of year' THEN
      moment := date_trunc('year', moment);
    ELSIF m ~ '^weekday [0-6]$' THEN
      target := substr(m, 9)::int;
      moment := moment + make_interval(days => ((target - extract(dow FROM moment)::int + 7) % 7));
    ELSIF m ~ '^[-+]?[0-9]+(\.[0-9]*)?\s+(day|hour|minute|second|month|year)s?$' THEN
      parts := regexp_match(m, '^([-+]?[0-9]+(?:\.[0-9]*)?)\s+(day|hour|minute|second|month|year)s?$');
      amount := parts[1]::double precision;
      unit := parts[2];
      IF unit IN ('month', 'year') THEN
        moment := moment + make_interval(months => (amount * CASE unit WHEN 'year' THEN 12 ELSE 1 END)::int);
      ELSE
        moment := moment + make_interval(secs => amount * CASE unit
          WHEN 'day' THEN 86400 WHEN 'hour' THEN 3600 WHEN 'minute' THEN 60 ELSE 1 END);
      END IF;
    ELSE
      RETURN NULL;
    END IF;
  END LOOP;
  RETURN moment;
END;
$$;

CREATE FUNCTION datetime(value text) RETURNS text
LANGUAGE sql STABLE STRICT AS $$ SELECT to_char(kodiai_sqlite_moment(value, '{}'), 'YYYY-MM-DD HH24:MI:SS') $$;
CREATE FUNCTION datetime(value text, VARIADIC modifiers text[]) RETURNS text
LANGUAGE sql STABLE STRICT AS $$ SELECT to_char(kodiai_sqlite_moment(value, modifiers), 'YYYY-MM-DD HH24:MI:SS') $$;

CREATE FUNCTION date(value text) RETURNS text
LANGUAGE sql STABLE STRICT AS $$ SELECT to_char(kodiai_sqlite_moment(value, '{}'), 'YYYY-MM-DD') $$;
CREATE FUNCTION date(value text, VARIADIC modifiers text[]) RETURNS text
LANGUAGE sql STABLE STRICT AS $$ SELECT to_char(kodiai_sqlite_moment(value, modifiers), 'YYYY-MM-DD') $$;

CREATE FUNCTION julianday(value text) RETURNS double precision
LANGUAGE sql STABLE STRICT AS $$
  SELECT extract(epoch FROM kodiai_sqlite_moment(value, '{}') AT TIME ZONE 'UTC')::double precision / 86400.0 + 2440587.5
$$;
CREATE FUNCTION julianday(value text, VARIADIC modifiers text[]) RETURNS double precision
LANGUAGE sql STABLE STRICT AS $$
  SELECT extract(epoch FROM kodiai_sqlite_moment(value, modifiers) AT TIME ZONE 'UTC')::double precision / 86400.0 + 2440587.5
$$;

CREATE FUNCTION unixepoch(value text) RETURNS bigint
LANGUAGE sql STABLE STRICT AS $$
  SELECT floor(extract(epoch FROM kodiai_sqlite_moment(value, '{}') AT TIME ZONE 'UTC'))::bigint
$$;
CREATE FUNCTION unixepoch(value text, VARIADIC modifiers text[]) RETURNS bigint
LANGUAGE sql STABLE STRICT AS $$
  SELECT floor(extract(epoch FROM kodiai_sqlite_moment(value, modifiers) AT TIME ZONE 'UTC'))::bigint
$$;

CREATE FUNCTION kodiai_sqlite_strftime(format text, moment timestamp) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE
  out text := '';
  i int := 1;
  c text;
  yday int;
  monday_wd int;
BEGIN
  WHILE i <= length(format) LOOP
    c := substr(format, i, 1);
    IF c <> '%' OR i = length(format) THEN
      out := out || c;
      i := i + 1;
      CONTINUE;
    END IF;
    c := substr(format, i + 1, 1);
    i := i + 2;
    out := out || CASE c
      WHEN 'd' THEN to_char(moment, 'DD')
      WHEN 'e' THEN lpad(extract(day FROM moment)::int::text, 2, ' ')
      WHEN 'f' THEN to_char(moment, 'SS.MS')
      WHEN 'H' THEN to_char(moment, 'HH24')
      WHEN 'j' THEN to_char(moment, 'DDD')
      WHEN 'J' THEN (extract(epoch FROM moment AT TIME ZONE 'UTC')::double precision / 86400.0 + 2440587.5)::text
      WHEN 'm' THEN to_char(moment, 'MM')
      WHEN 'M' THEN to_char(moment, 'MI')
      WHEN 's' THEN floor(extract(epoch FROM moment AT TIME ZONE 'UTC'))::bigint::text
      WHEN 'S' THEN to_char(moment, 'SS')
      WHEN 'u' THEN extract(isodow FROM moment)::int::text
      WHEN 'w' THEN extract(dow FROM moment)::int::text
      WHEN 'W' THEN lpad(((extract(doy FROM moment)::int - 1 + 7 - ((extract(dow FROM moment)::int + 6) % 7)) / 7)::text, 2, '0')
      WHEN 'Y' THEN to_char(moment, 'YYYY')
      WHEN '%' THEN '%'
      ELSE NULL  -- an unknown conversion: SQLite returns NULL for the whole string
    END;
    IF out IS NULL THEN
      RETURN NULL;
    END IF;
  END LOOP;
  RETURN out;
END;
$$;

CREATE FUNCTION strftime(format text, value text) RETURNS text
LANGUAGE sql STABLE STRICT AS $$ SELECT kodiai_sqlite_strftime(format, kodiai_sqlite_moment(value, '{}')) $$;
CREATE FUNCTION strftime(format text, value text, VARIADIC modifiers text[]) RETURNS text
LANGUAGE sql STABLE STRICT AS $$ SELECT kodiai_sqlite_strftime(format, kodiai_sqlite_moment(value, modifiers)) $$;

CREATE FUNCTION round(value double precision, digits integer) RETURNS double precision
LANGUAGE sql IMMUTABLE STRICT AS $$ SELECT round(value::numeric, digits)::double precision $$;

CREATE FUNCTION kodiai_sum_boolean(state bigint, value boolean) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN value IS NULL THEN state ELSE coalesce(state, 0) + CASE WHEN value THEN 1 ELSE 0 END END
$$;
CREATE AGGREGATE sum(boolean) (SFUNC = kodiai_sum_boolean, STYPE = bigint);

CREATE FUNCTION ifnull(value anycompatible, fallback anycompatible) RETURNS anycompatible
LANGUAGE sql IMMUTABLE AS $$ SELECT coalesce(value, fallback) $$;

CREATE FUNCTION instr(haystack text, needle text) RETURNS integer
LANGUAGE sql IMMUTABLE STRICT AS $$ SELECT strpos(haystack, needle) $$;

CREATE FUNCTION kodiai_concat_step(state text, value anyelement, separator text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN value IS NULL THEN state WHEN state IS NULL THEN value::text
    ELSE state || separator || value::text END
$$;
CREATE FUNCTION kodiai_concat_step(state text, value anyelement) RETURNS text
LANGUAGE sql IMMUTABLE AS $$ SELECT kodiai_concat_step(state, value, ',') $$;
CREATE AGGREGATE group_concat(anyelement) (SFUNC = kodiai_concat_step, STYPE = text);
CREATE AGGREGATE group_concat(anyelement, text) (SFUNC = kodiai_concat_step, STYPE = text);

-- date('now') with a bare literal is a type cast in PostgreSQL (a value of type date, not text): these
-- operators compare such a date with TEXT timestamps the way SQLite compares the two texts
-- (created_at >= date('now') keeps today's rows).
CREATE FUNCTION kodiai_date_text(value date) RETURNS text
LANGUAGE sql IMMUTABLE STRICT AS $$ SELECT to_char(value, 'YYYY-MM-DD') $$;
CREATE FUNCTION kodiai_text_lt_date(a text, b date) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT AS $$ SELECT a < kodiai_date_text(b) COLLATE "C" $$;
CREATE FUNCTION kodiai_text_le_date(a text, b date) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT AS $$ SELECT a <= kodiai_date_text(b) COLLATE "C" $$;
CREATE FUNCTION kodiai_text_gt_date(a text, b date) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT AS $$ SELECT a > kodiai_date_text(b) COLLATE "C" $$;
CREATE FUNCTION kodiai_text_ge_date(a text, b date) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT AS $$ SELECT a >= kodiai_date_text(b) COLLATE "C" $$;
CREATE FUNCTION kodiai_text_eq_date(a text, b date) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT AS $$ SELECT a = kodiai_date_text(b) COLLATE "C" $$;
CREATE FUNCTION kodiai_text_ne_date(a text, b date) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT AS $$ SELECT a <> kodiai_date_text(b) COLLATE "C" $$;
CREATE OPERATOR < (LEFTARG = text, RIGHTARG = date, FUNCTION = kodiai_text_lt_date, COMMUTATOR = >);
CREATE OPERATOR <= (LEFTARG = text, RIGHTARG = date, FUNCTION = kodiai_text_le_date, COMMUTATOR = >=);
CREATE OPERATOR > (LEFTARG = text, RIGHTARG = date, FUNCTION = kodiai_text_gt_date, COMMUTATOR = <);
CREATE OPERATOR >= (LEFTARG = text, RIGHTARG = date, FUNCTION = kodiai_text_ge_date, COMMUTATOR = <=);
CREATE OPERATOR = (LEFTARG = text, RIGHTARG = date, FUNCTION = kodiai_text_eq_date, COMMUTATOR = =);
CREATE OPERATOR <> (LEFTARG = text, RIGHTARG = date, FUNCTION = kodiai_text_ne_date, COMMUTATOR = <>);
CREATE FUNCTION kodiai_date_lt_text(a date, b text) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT AS $$ SELECT kodiai_date_text(a) < b COLLATE "C" $$;
CREATE FUNCTION kodiai_date_le_text(a date, b text) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT AS $$ SELECT kodiai_date_text(a) <= b COLLATE "C" $$;
CREATE FUNCTION kodiai_date_gt_text(a date, b text) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT AS $$ SELECT kodiai_date_text(a) > b COLLATE "C" $$;
CREATE FUNCTION kodiai_date_ge_text(a date, b text) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT AS $$ SELECT kodiai_date_text(a) >= b COLLATE "C" $$;
CREATE FUNCTION kodiai_date_eq_text(a date, b text) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT AS $$ SELECT kodiai_date_text(a) = b COLLATE "C" $$;
CREATE FUNCTION kodiai_date_ne_text(a date, b text) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT AS $$ SELECT kodiai_date_text(a) <> b COLLATE "C" $$;
CREATE OPERATOR < (LEFTARG = date, RIGHTARG = text, FUNCTION = kodiai_date_lt_text, COMMUTATOR = >);
CREATE OPERATOR <= (LEFTARG = date, RIGHTARG = text, FUNCTION = kodiai_date_le_text, COMMUTATOR = >=);
CREATE OPERATOR > (LEFTARG = date, RIGHTARG = text, FUNCTION = kodiai_date_gt_text, COMMUTATOR = <);
CREATE OPERATOR >= (LEFTARG = date, RIGHTARG = text, FUNCTION = kodiai_date_ge_text, COMMUTATOR = <=);
CREATE OPERATOR = (LEFTARG = date, RIGHTARG = text, FUNCTION = kodiai_date_eq_text, COMMUTATOR = =);
CREATE OPERATOR <> (LEFTARG = date, RIGHTARG = text, FUNCTION = kodiai_date_ne_text, COMMUTATOR = <>);
