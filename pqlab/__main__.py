from pqlab.app.cli import main

raise SystemExit(main())
