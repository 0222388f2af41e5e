-- The SQL fence at version 1, as pgfence.InstallSQL returned it
-- before version 2 (the fence log), at commit d38aaac, in
-- schema public. TestInstallUpgradesVersion1 builds old fences from it.
CREATE SCHEMA IF NOT EXISTS "public";

CREATE TABLE IF NOT EXISTS "public".baton_fence (name TEXT PRIMARY KEY, token BIGINT NOT NULL);

CREATE TABLE "public".baton_fence_meta (key text PRIMARY KEY, value text NOT NULL);

CREATE TABLE "public".baton_fence_key (
	id     int PRIMARY KEY CHECK (id = 1),
	secret bytea NOT NULL CHECK (octet_length(secret) >= 16));

REVOKE ALL ON "public".baton_fence_key FROM PUBLIC;

CREATE FUNCTION "public".baton_fence(p_name text, p_token bigint, p_sig text DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
	k       bytea;
	msg     bytea;
	highest bigint;
BEGIN
	IF p_name IS NULL OR p_name = '' THEN
		RAISE EXCEPTION 'baton_fence: empty name' USING ERRCODE = 'BF003',
			HINT = 'pass the election name, $BATON_NAME';
	END IF;
	IF p_token IS NULL OR p_token < 1 THEN
		RAISE EXCEPTION 'baton_fence: invalid token % for %', coalesce(p_token::text, 'NULL'), quote_literal(p_name)
			USING ERRCODE = 'BF003', HINT = 'pass the fencing token, $BATON_TOKEN; election tokens start at 1';
	END IF;
	SELECT secret INTO k FROM "public".baton_fence_key WHERE id = 1;
	IF k IS NOT NULL THEN
		IF p_sig IS NULL OR p_sig !~ '^[0-9a-fA-F]{64}$' THEN
			RAISE EXCEPTION 'baton_fence: token % for % carries no valid signature', p_token, quote_literal(p_name)
				USING ERRCODE = 'BF002', HINT = 'this fence holds a key: pass $BATON_TOKEN_SIG as the third argument';
		END IF;
		msg := int8send(octet_length(convert_to(p_name, 'UTF8'))::bigint) || convert_to(p_name, 'UTF8') || int8send(p_token);
		-- Compared under a second HMAC, so that the time taken tells
		-- nothing about how much of a forged signature matched.
		IF "public".baton_fence_hmac("public".baton_fence_hmac(msg, k), k)
				<> "public".baton_fence_hmac(decode(p_sig, 'hex'), k) THEN
			RAISE EXCEPTION 'baton_fence: token % for % is not signed by this fence''s key', p_token, quote_literal(p_name)
				USING ERRCODE = 'BF002';
		END IF;
	END IF;
	INSERT INTO "public".baton_fence AS f (name, token) VALUES (p_name, p_token)
		ON CONFLICT (name) DO UPDATE SET token = excluded.token WHERE f.token <= excluded.token;
	IF FOUND THEN
		RETURN p_token;
	END IF;
	SELECT f.token INTO highest FROM "public".baton_fence f WHERE f.name = p_name;
	RAISE EXCEPTION 'baton_fence: stale token % for %: the fence has accepted token %', p_token, quote_literal(p_name), highest
		USING ERRCODE = 'BF001',
			DETAIL = 'a newer leader has written under a higher token',
			HINT = 'roll the transaction back: none of its work may commit';
END
$fn$;

REVOKE ALL ON FUNCTION "public".baton_fence(text, bigint, text) FROM PUBLIC;

COMMENT ON FUNCTION "public".baton_fence(text, bigint, text) IS
'baton fence version 1: accepts (name, token[, signature]) if token is at least the highest accepted for name, raising it in the caller''s transaction; raises SQLSTATE BF001 (stale), BF002 (bad signature), BF003 (invalid input)';

INSERT INTO "public".baton_fence_meta (key, value) VALUES ('version', '1');
