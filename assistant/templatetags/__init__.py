"""Template filters for the assistant's admin pages (`price_list`: money per its currency,
availability in words). Outside the layer contract; imports only `knowledge.money` and
`models`, and only templates load it."""
