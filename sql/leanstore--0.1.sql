/* leanstore--0.1.sql */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION leanstore" to load this file. \quit

CREATE FUNCTION leanstore_tableam_handler(internal)
RETURNS table_am_handler
AS 'MODULE_PATHNAME', 'leanstore_tableam_handler'
LANGUAGE C STRICT;

CREATE ACCESS METHOD leanstore TYPE TABLE HANDLER leanstore_tableam_handler;
COMMENT ON ACCESS METHOD leanstore IS 'LeanStore-style table access method';
