"""What the assistant knows: the effective price list of a channel (`effective`), its import
(`price_files` reads, `price_import` parses, `price_versions` writes, `price_rows` the shared
types), the upload worker (`price_upload`) and the diff (`price_diff`), matching names across
languages (`matching`, `vocabulary`, `transliteration`), money, business rules, manager
agreements, and what the settings page accepts (`settings_validation`). Layer `knowledge`,
beside `capacity`: may import only the floor (`language`, `schema`, `models`) and the core
(`inbox.conversations`, `inbox.platform`); never `llm`, `decision`, `speech`, `turn`, `eval`,
`tasks` or `replay`."""
