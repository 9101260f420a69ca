"""What Docusaurus makes of a docs tree: sidebar order and published pages (`order`), book numbering
(`numbering`), routes and URLs (`urls`), and the site's own configuration (`config`, `js_literals`)."""
