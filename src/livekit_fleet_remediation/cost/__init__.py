"""The stack's monthly bill before it is deployed (``lkfr cost``): the synthesized template's
billable counts (``stack``), what the functions do in a healthy hour and through an incident
(``usage``), the agents' signal lines (``agent_lines``), at a dated price table of the stack's own
region or a price file (``prices``), priced component by component (``model``)."""
