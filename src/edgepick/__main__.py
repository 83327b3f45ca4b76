from edgepick.cli.app import main

main()
